"""Every internal link of a built HTML site: the file an href or src names exists, and so does
the element its fragment names. External links (a scheme, or //host) are not followed. Prints
each broken link with its page; exits 1 when there is one, and when the site has no page."""

import html.parser
import os
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            if value and ((name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script"))):
                self.links.append(value)


def main(root):
    pages = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                page = Page()
                with open(path, encoding="utf-8") as f:
                    page.feed(f.read())
                pages[os.path.normpath(path)] = page
    if not pages:
        print(f"check_links: no HTML page under {root}")
        return 1
    broken = checked = 0
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = path if not parts.path else os.path.normpath(
                os.path.join(os.path.dirname(path), urllib.parse.unquote(parts.path)))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            checked += 1
            if not os.path.exists(target):
                print(f"{os.path.relpath(path, root)}: {link}: no such file")
                broken += 1
            elif parts.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else set()
                if urllib.parse.unquote(parts.fragment) not in ids:
                    print(f"{os.path.relpath(path, root)}: {link}: no element with that id")
                    broken += 1
    print(f"check_links: {checked} internal links in {len(pages)} pages, {broken} broken")
    return 1 if broken or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
