#!/usr/bin/env python3
"""A monit client as the BOSH agent is (cloudfoundry/bosh-agent, jobsupervisor/monit:
status.go's structures and ServicesInGroup, http_client.go's requests), for tests.

  agent_client.py FILE                 parse a status document from a file
  agent_client.py URL USER PASSWORD    GET URL/_status2?format=xml with Basic auth

Prints `incarnation N` (when the document has one), then per service of the `vcap`
group, in document order: NAME STATUS MONITORED PENDING PID, where STATUS is the agent's
StatusString (unknown, starting, running, failing), and PID is `-` or `live` (a process
of that pid exists) or `dead`.
"""
import base64
import os
import sys
import urllib.request
import xml.etree.ElementTree as ET


def status_string(monitor, status):
    if monitor == 0:
        return "unknown"
    if monitor == 2:
        return "starting"
    if status == 0:
        return "running"
    return "failing"


def main():
    if len(sys.argv) == 2:
        data = open(sys.argv[1], "rb").read()
    else:
        url, user, password = sys.argv[1:4]
        req = urllib.request.Request(url.rstrip("/") + "/_status2?format=xml")
        cred = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        req.add_header("Authorization", "Basic " + cred)
        with urllib.request.urlopen(req, timeout=10) as r:
            if r.status != 200:
                sys.exit("status %d" % r.status)
            data = r.read()
    root = ET.fromstring(data)  # the ISO-8859-1 declaration is honoured
    assert root.tag == "monit", root.tag
    inc = root.get("incarnation")
    if inc is not None:
        print("incarnation", int(inc))
    group = set()
    for g in root.iter("servicegroup"):
        if g.get("name") == "vcap":
            group = {s.text for s in g.findall("service")}
    for s in root.find("services").findall("service"):
        name = s.get("name")
        if name not in group:
            continue
        num = lambda tag: int((s.findtext(tag) or "0").strip())
        pid = s.findtext("pid")
        if pid is None:
            shown = "-"
        else:
            shown = "live" if os.path.exists("/proc/%d" % int(pid)) else "dead"
        print(name, status_string(num("monitor"), num("status")), int(num("monitor") > 0),
              int(num("pendingaction") > 0), shown)


main()
