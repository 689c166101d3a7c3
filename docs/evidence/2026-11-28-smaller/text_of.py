"""The visible text of an HTML page, one line per block element, images by alt (for diffs)."""
import html.parser, sys, re
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.out = []; self.cur = []; self.skip = False
    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"): self.skip = True
        if tag in ("p", "li", "tr", "h1", "h2", "h3", "dt", "dd", "br", "table", "ul"): self.flush()
        if tag == "img": self.cur.append(f"[img {dict(attrs).get('alt')}]")
        if tag in ("td", "th"): self.cur.append(" | ")
    def handle_endtag(self, tag):
        if tag in ("style", "script"): self.skip = False
    def handle_data(self, d):
        if not self.skip: self.cur.append(d)
    def flush(self):
        t = re.sub(r"\s+", " ", "".join(self.cur)).strip()
        if t: self.out.append(t)
        self.cur = []
p = P(); p.feed(open(sys.argv[1]).read()); p.flush(); print("\n".join(p.out))
