# A tiny daemon that speaks systemd's sd_notify protocol: it starts, says READY=1 on
# $NOTIFY_SOCKET, then logs a line every few seconds.
import os, socket, sys, time

time.sleep(0.5)  # pretend to initialise
addr = os.environ.get("NOTIFY_SOCKET", "")
if addr:
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"STATUS=serving\nREADY=1\n", addr)
while True:
    print(os.environ.get("GREETING", "hello"), "uid", os.getuid(), flush=True)
    time.sleep(5)
