#!/usr/bin/env python3
"""Drive an interactive shell under a new pty, as a person at a terminal would.

usage: pty_shell.py prog [args...]

Runs prog as the session leader of a new pty (the terminal of `docker run -ti` or of an
init under test), then: checks the shell answers; runs `sleep 100` and types ^C, and
checks the shell answers again within seconds (the ^C went to the job, not elsewhere);
starts a background job and lists it with `jobs` (job control is on); types `exit 3`.
Prints the transcript, then one line `RESULT ok|<what failed> EXIT <status>`.
"""
import os
import pty
import select
import sys
import time

buf = b""


def read_until(fd, needle, timeout):
    global buf
    deadline = time.time() + timeout
    while needle not in buf:
        left = deadline - time.time()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return needle in buf
            if not data:
                return needle in buf
            buf += data
    return True


def main():
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["PS1"] = "PROMPT> "
        os.execvp(sys.argv[1], sys.argv[1:])
    failure = None
    steps = [
        (b"echo START$((1+1))\n", b"START2", 30),
        (b"sleep 100\n", None, 1.5),
        (b"\x03", None, 0.5),
        (b"echo ALIVE$((2+3))\n", b"ALIVE5", 10),
        (b"sleep 50 &\n", None, 0.5),
        (b"jobs; echo JOBS$((3+4))\n", b"JOBS7", 10),
        (b"kill %1; echo KILLED$((4+5))\n", b"KILLED9", 10),
        (b"exit 3\n", None, 0),
    ]
    for send, expect, wait in steps:
        os.write(fd, send)
        if expect is None:
            time.sleep(wait)
            continue
        if not read_until(fd, expect, wait):
            failure = "no %r after %r" % (expect.decode(), send.decode().strip())
            break
    if failure is None:
        text = buf.decode(errors="replace")
        if "Running" not in text or "sleep 50" not in text:
            failure = "jobs did not list the background job"
        elif "job control turned off" in text or "no job control" in text:
            failure = "job control off"
    # Drain until the child exits (bounded).
    deadline = time.time() + 20
    status = None
    while time.time() < deadline:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        read_until(fd, b"\0never\0", 0.1)
    if status is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        failure = failure or "did not exit"
        code = -1
    else:
        code = os.waitstatus_to_exitcode(status)
    sys.stdout.write(buf.decode(errors="replace"))
    sys.stdout.write("\nRESULT %s EXIT %d\n" % (failure or "ok", code))


main()
