"""A loopback OTLP/HTTP trace receiver for the conformance suite: it takes what the
instrumented agents export (`POST /v1/traces`, protobuf as the Python SDK sends it, or JSON;
gzip or not) and appends each request to OUT as one line of OTLP JSON, the form the
Collector's file exporter writes and `harness import` reads: lowerCamelCase keys, trace and span
ids in hex, 64-bit integers as strings, enums as numbers, default values left out.

    otlp_receiver.py OUT      prints `listening on http://127.0.0.1:PORT`; stops when stdin closes"""

import base64
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

IDS = {"traceId", "spanId", "parentSpanId"}


def hex_ids(node):
    """protobuf's JSON writes bytes in base64; OTLP JSON writes trace and span ids in hex."""
    if isinstance(node, dict):
        return {k: base64.b64decode(v).hex() if k in IDS and isinstance(v, str) else hex_ids(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [hex_ids(v) for v in node]
    return node


def base64_ids(node):
    """The reverse, to read an OTLP JSON request with protobuf's JSON parser."""
    if isinstance(node, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in IDS and isinstance(v, str) else base64_ids(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [base64_ids(v) for v in node]
    return node


def main():
    out = open(sys.argv[1], "a", encoding="utf-8")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest()
            json_body = self.headers.get("Content-Type", "").startswith("application/json")
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            if json_body:
                ParseDict(base64_ids(json.loads(body)), request)
            else:
                request.ParseFromString(body)
            line = json.dumps(hex_ids(MessageToDict(request, use_integers_for_enums=True)),
                              separators=(",", ":"), ensure_ascii=False)
            with lock:
                out.write(line + "\n")
                out.flush()
            reply = ExportTraceServiceResponse()
            payload = json.dumps(MessageToDict(reply)).encode() if json_body else reply.SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if json_body else "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()
    server.shutdown()
    out.close()


if __name__ == "__main__":
    main()
