"""A streamed Chat Completions provider on 127.0.0.1 that ends its answers as real providers
often do: `data: [DONE]` in one write, the end of the body in a later one. It waits up to a
second for the client to close first (the openai SDK closes the stream at `[DONE]`), so the
proxy sees the client go before the body ends. Every answer is the same short text, with
non-ASCII in it.    split_stub.py   (prints `listening on http://127.0.0.1:PORT/v1`)"""

import json
import select
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TEXT = ["Done: ", "héllo ", "wörld ", "✓"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        events = []
        for i, piece in enumerate(TEXT):
            delta = {"content": piece} if i else {"role": "assistant", "content": piece}
            events.append({"id": "chatcmpl-split", "object": "chat.completion.chunk", "created": 1,
                           "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        events.append({"id": "chatcmpl-split", "object": "chat.completion.chunk", "created": 1,
                       "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        data = body.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        # The end of the body comes later: after the client has gone, or a second.
        select.select([self.connection], [], [], 1.0)
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
