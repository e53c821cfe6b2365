#!/usr/bin/env python3
"""Drive Debian's headless Chromium over its DevTools pipe (stdlib only): load URL,
print the rendered text of every `td.state` cell as `NAME STATE` lines, save a PNG
screenshot, then press the button with id BUTTON (a real click on the page) and wait
for the page the form post answers with; print `pressed` and the answer's title.

usage: chromium_press.py CHROMIUM PROFILE URL SCREENSHOT BUTTON
"""
import base64, json, os, subprocess, sys, time

chromium, profile, url, shot, button = sys.argv[1:6]

# fd 3: Chromium reads commands; fd 4: it writes answers (NUL-terminated JSON).
cmd_r, cmd_w = os.pipe()
ans_r, ans_w = os.pipe()
os.set_inheritable(cmd_r, True)
os.set_inheritable(ans_w, True)


def child():
    os.dup2(cmd_r, 3)
    os.dup2(ans_w, 4)


proc = subprocess.Popen(
    [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
     "--user-data-dir=" + profile, "--remote-debugging-pipe", "--window-size=900,400",
     "about:blank"],
    preexec_fn=child, close_fds=False,
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile + ".log"), "w"))
os.close(cmd_r)
os.close(ans_w)
buf = b""
next_id = 0
events = []


def read_msg():
    global buf
    while b"\0" not in buf:
        chunk = os.read(ans_r, 65536)
        if not chunk:
            sys.exit("chromium_press: chromium closed its pipe")
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    return json.loads(msg)


def send(method, params=None, session=None):
    global next_id
    next_id += 1
    m = {"id": next_id, "method": method, "params": params or {}}
    if session:
        m["sessionId"] = session
    os.write(cmd_w, json.dumps(m).encode() + b"\0")
    while True:
        r = read_msg()
        if r.get("id") == next_id:
            if "error" in r:
                sys.exit("chromium_press: %s: %s" % (method, r["error"]))
            return r.get("result", {})
        events.append(r)


def wait_event(name, session, deadline=30):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for i, e in enumerate(events):
            if e.get("method") == name and e.get("sessionId") == session:
                del events[: i + 1]
                return e
        events.append(read_msg())
    sys.exit("chromium_press: no %s" % name)


def evaluate(js, s):
    r = send("Runtime.evaluate", {"expression": js, "returnByValue": True}, s)
    return r["result"].get("value")


try:
    target = send("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    send("Page.enable", session=s)
    send("Page.navigate", {"url": url}, s)
    wait_event("Page.loadEventFired", s)
    rows = evaluate(
        "Array.from(document.querySelectorAll('tr')).filter(r => r.querySelector('td.state'))"
        ".map(r => r.cells[0].innerText + ' ' + r.querySelector('td.state').innerText).join('\\n')",
        s)
    print(rows)
    png = send("Page.captureScreenshot", {"format": "png"}, s)["data"]
    with open(shot, "wb") as f:
        f.write(base64.b64decode(png))
    # A real mouse click at the button's centre, as a user's.
    box = evaluate(
        "(() => { const b = document.getElementById(%s); if (!b) return null;"
        " const r = b.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        % json.dumps(button), s)
    if box is None:
        sys.exit("chromium_press: no button %s" % button)
    for kind in ("mousePressed", "mouseReleased"):
        send("Input.dispatchMouseEvent",
             {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}, s)
    wait_event("Page.loadEventFired", s)
    print("pressed " + evaluate("document.title + ' ' + location.pathname", s))
finally:
    try:
        send("Browser.close")
    except SystemExit:
        pass
    proc.wait(timeout=30)
