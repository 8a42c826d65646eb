"""A local web site for the rendering tests: pages that build themselves in JavaScript, pages that
hang, pages that try to reach inward, tall pages, heavy pages. It counts the requests it gets.

Two servers stand in for the world, as in tests/integration/test_fetch_guard.py: the site on
127.0.0.1 (reached as ``public.test``, which the tests' resolver maps there and their guard
treats as public) and an intranet on 127.0.0.2 (loopback, left blocked).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import WSMsgType, web

from tests.support.target import PNG_1X1

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "appshell"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SPA = """<!doctype html><html><head><title>Shop</title></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
<script>
fetch("/api/products").then(r => r.json()).then(data => {
  const items = data.products.map(p => `<li>${p}</li>`).join("");
  document.getElementById("root").innerHTML =
    `<main><h1>${data.title}</h1><p>Built by JavaScript from the API.</p><ul>${items}</ul></main>`;
});
</script></body></html>"""

STATIC = """<!doctype html><html><head><title>About us</title>
<script async src="/analytics.js"></script></head><body><main><h1>About us</h1>
<p>We are a small team of people who repair bicycles, sell second-hand frames and teach anyone
who wants to learn how to look after their own bike. The workshop has been in the same railway
arch since 1998, and it is open six days a week from nine until six.</p>
<p>Evening classes run on Tuesdays and Thursdays. They cover punctures, brakes, gears and wheel
truing, and each class ends with a cup of tea and a look at whatever bike someone brought in.</p>
</main></body></html>"""

LOOP_INLINE = (
    "<!doctype html><html><body><script>while (true) {}</script><p>never</p></body></html>"
)
LOOP_LATER = (
    "<!doctype html><html><body><p>Parsed, then busy.</p>"
    "<script>addEventListener('load', () => { while (true) {} });</script></body></html>"
)

# Every way a page can reach for an address: fetch, an image, an iframe, a WebSocket, a
# navigation of a popup, a redirect through the public site. Targets come in the query.
REACH = """<!doctype html><html><head><title>reach</title></head><body><h1>Reaching out</h1>
<div id="out"></div><script>
const targets = %s;
const out = document.getElementById("out");
const note = text => {
  const p = document.createElement("p"); p.textContent = text; out.appendChild(p);
};
for (const url of targets.fetch) {
  fetch(url, {mode: "no-cors"}).then(() => note("fetched " + url), () => note("refused " + url));
}
for (const url of targets.image) { const img = new Image(); img.src = url; out.appendChild(img); }
for (const url of targets.frame) {
  const frame = document.createElement("iframe"); frame.src = url; out.appendChild(frame);
}
for (const url of targets.socket) {
  try {
    const ws = new WebSocket(url);
    ws.onopen = () => { ws.send("hello"); };
    ws.onmessage = event => note("socket said " + event.data);
    ws.onerror = () => note("socket refused " + url);
  } catch (e) { note("socket error " + e); }
}
for (const url of targets.popup) { window.open(url); }
</script></body></html>"""

TALL = """<!doctype html><html><head><style>body {{ margin: 0; }}</style></head><body>
<div style="height: {height}px; background: linear-gradient(#fff, #036)">tall</div></body></html>"""

LATE = """<!doctype html><html><body><p>Before.</p><script>
setTimeout(() => { const p = document.createElement("p"); p.id = "late";
  p.textContent = "Arrived late."; document.body.appendChild(p); }, 300);
</script></body></html>"""

IMAGES = """<!doctype html><html><head><style>
@font-face {{ font-family: "Test"; src: url("/font.woff2"); }} body {{ font-family: "Test"; }}
</style></head><body><h1>Gallery</h1>{images}</body></html>"""

LOCAL_FILES = """<!doctype html><html><body><h1>Local files</h1>
<iframe src="file:///etc/passwd"></iframe>
<script>
fetch("file:///etc/passwd").then(r => r.text()).then(t => document.body.append("read " + t),
  () => document.body.append(" fetch refused"));
setTimeout(() => { location.href = "file:///etc/passwd"; }, 10);
</script></body></html>"""

SERVICE_WORKER = """<!doctype html><html><body><p id="sw">pending</p><script>
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js").then(
    () => { document.getElementById("sw").textContent = "registered"; },
    () => { document.getElementById("sw").textContent = "refused"; });
} else { document.getElementById("sw").textContent = "absent"; }
</script></body></html>"""

DOWNLOAD = """<!doctype html><html><body><h1>Download</h1>
<a id="a" href="/file.bin" download>get</a>
<script>document.getElementById("a").click();</script></body></html>"""

# What the browser says it is: a mobile render must read as a phone.
DEVICE = """<!doctype html><html><head><meta name="viewport" content="width=device-width">
<title>device</title></head><body><p id="device"></p><script>
document.getElementById("device").textContent = [
  "width:" + innerWidth, "touch:" + navigator.maxTouchPoints,
  "mobile-ua:" + /Mobile/.test(navigator.userAgent)].join(" ");
</script></body></html>"""

# A page to act on: a button that reveals text, a field and the keys typed in it, a tall body
# to scroll, a link inward and a background only printing loads (the intranet's addresses come
# in the query).
ACTIONS = """<!doctype html><html><head><title>actions</title></head><body>
<button id="more" onclick="setTimeout(() => {
  const p = document.createElement('p'); p.id = 'shown'; p.textContent = 'Revealed text';
  document.body.appendChild(p); }, 100)">More</button>
<input id="q"><p id="typed"></p><p id="scrolled">top</p>
<a id="inward" href="">inward</a>
<div style="height:3000px"></div>
<script>
const q = document.getElementById("q");
q.addEventListener("keydown", e => {
  if (e.key === "Enter") document.getElementById("typed").textContent = "sent:" + q.value; });
addEventListener("scroll", () => {
  document.getElementById("scrolled").textContent = "scrolled"; });
document.getElementById("inward").href = new URLSearchParams(location.search).get("inward") || "";
const printed = new URLSearchParams(location.search).get("printed");
if (printed) document.head.appendChild(document.createElement("style")).textContent =
  "@media print { body { background: url(" + JSON.stringify(printed) + ") } }";
</script></body></html>"""


class RenderSite:
    """The site; ``hits`` counts requests by path. Start with :meth:`start` on 127.0.0.1."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.hits: Counter[str] = Counter()
        self.user_agents: list[str] = []  # those /device was asked with
        self.slow_release = asyncio.Event()
        self.slow_arrived = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    def url(self, path: str, *, host: str = "public.test") -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def total_hits(self) -> int:
        return sum(self.hits.values())

    async def start(self) -> RenderSite:
        app = web.Application(middlewares=[self._count])
        app.add_routes(
            [
                web.get("/spa", _page(SPA)),
                web.get("/api/products", self._products),
                web.get("/static", _page(STATIC)),
                web.get("/device", self._device),
                web.get("/actions", _page(ACTIONS)),
                web.get("/analytics.js", _script("/* analytics */")),
                web.get("/loop", _page(LOOP_INLINE)),
                web.get("/loop-later", _page(LOOP_LATER)),
                web.get("/reach", self._reach),
                web.get("/secret", self._secret),
                web.get("/ws", self._socket),
                web.get("/redirect", self._redirect),
                web.get("/tall", self._tall),
                web.get("/late", _page(LATE)),
                web.get("/images", self._images),
                web.get("/img/{n}.png", self._png),
                web.get("/font.woff2", self._font),
                web.get("/heavy", self._heavy),
                web.get("/blob", self._blob),
                web.get("/slow", self._slow),
                web.get("/drip", self._drip),
                web.get("/status/{code}", self._status),
                web.get("/local-files", _page(LOCAL_FILES)),
                web.get("/service-worker", _page(SERVICE_WORKER)),
                web.get("/sw.js", _script("self.addEventListener('fetch', () => {});")),
                web.get("/download", _page(DOWNLOAD)),
                web.get("/file.bin", self._file),
                web.get("/corpus/{name}", self._corpus),
            ]
        )
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        self.slow_release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _count(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.hits[request.path] += 1
        return await handler(request)

    async def _device(self, request: web.Request) -> web.Response:
        self.user_agents.append(request.headers.get("User-Agent", ""))
        return web.Response(text=DEVICE, content_type="text/html")

    async def _products(self, request: web.Request) -> web.Response:
        data = {"title": "Bicycle parts", "products": ["Chain", "Saddle", "Brake pads"]}
        return web.json_response(data)

    async def _reach(self, request: web.Request) -> web.Response:
        targets = {kind: request.query.getall(kind, []) for kind in _REACH_KINDS}
        return web.Response(text=REACH % json.dumps(targets), content_type="text/html")

    async def _secret(self, request: web.Request) -> web.Response:
        return web.Response(text="the intranet's secret", content_type="text/html")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                await ws.send_str(f"echo {message.data}")
        return ws

    async def _redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def _tall(self, request: web.Request) -> web.Response:
        height = int(request.query.get("h", "3000"))
        return web.Response(text=TALL.format(height=height), content_type="text/html")

    async def _images(self, request: web.Request) -> web.Response:
        count = int(request.query.get("n", "5"))
        images = "".join(f'<img src="/img/{n}.png" width="10" height="10">' for n in range(count))
        return web.Response(text=IMAGES.format(images=images), content_type="text/html")

    async def _png(self, request: web.Request) -> web.Response:
        return web.Response(body=PNG_1X1, content_type="image/png")

    async def _font(self, request: web.Request) -> web.Response:
        return web.Response(body=b"wOF2" + b"\0" * 64, content_type="font/woff2")

    async def _heavy(self, request: web.Request) -> web.Response:
        count = int(request.query.get("n", "4"))
        blobs = "".join(f'<script src="/blob?i={n}"></script>' for n in range(count))
        return web.Response(
            text=f"<html><body><h1>Heavy</h1>{blobs}</body></html>", content_type="text/html"
        )

    async def _blob(self, request: web.Request) -> web.Response:
        # 512 KiB of a JavaScript comment per request.
        return web.Response(text="/*" + "x" * (512 * 1024) + "*/", content_type="text/javascript")

    async def _slow(self, request: web.Request) -> web.Response:
        self.slow_arrived.set()
        await self.slow_release.wait()
        return web.Response(text="<html><body>slow</body></html>", content_type="text/html")

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        """A document whose headers and first bytes come at once, and the rest never."""
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(b"<!doctype html><html><body><p>The beginning")
        await self.slow_release.wait()
        return response

    async def _status(self, request: web.Request) -> web.Response:
        code = int(request.match_info["code"])
        return web.Response(
            status=code, text=f"<html><body>status {code}</body></html>", content_type="text/html"
        )

    async def _file(self, request: web.Request) -> web.Response:
        return web.Response(
            body=b"\0" * 1024,
            content_type="application/octet-stream",
            headers={"Content-Disposition": 'attachment; filename="file.bin"'},
        )

    async def _corpus(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        path = CORPUS / name
        if path.parent != CORPUS or not path.is_file():
            raise web.HTTPNotFound()
        return web.Response(body=path.read_bytes(), content_type="text/html", charset="utf-8")


_REACH_KINDS = ("fetch", "image", "frame", "socket", "popup")


def _page(text: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/html")

    return handler


def _script(text: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/javascript")

    return handler
