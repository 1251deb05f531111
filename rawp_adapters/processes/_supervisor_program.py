"""The host's supervisor, run with ``python -I -S -c PROGRAM PSUTIL_DIR``: only the
standard library and psutil (found in ``PSUTIL_DIR``, where the host imported it from:
without ``site`` the interpreter starts sooner). One per host process, whatever its
number of sessions. It says "armed" before it imports what it needs only to read its
socket: a session's start waits for that word.

It reads JSON lines on stdin, a socket only the host holds: ``["watch", key, pid,
started, since, cgroup, marker, pipes]``, sent with ``pipes`` descriptors (``SCM_RIGHTS``:
copies of the host's ends of the agent's pipes, held until ``["close", key]`` or
``["release", key]``), and ``["release", key]``. End of file means the host is gone (or,
with nothing watched, that it needs no supervisor any more): it kills whatever is still
watched, and closes the copies only as it exits, so that an agent cannot see the end of
its stdin (nor a broken stdout) before it is stopped. psutil is imported after "armed"
(a session's start need not wait for it), and only once a process without a cgroup is
watched (the kernel does the rest for cgroups); such a pid is looked up as it is
registered, so that the kill follows the host's death at once. Every cgroup is killed
first (the kernel does it at once); the processes of the others are stopped (an agent
that notices the host's death some other way and exits would hand the orphans it
adopted as a subreaper on to init), killed with their trees (one pass over /proc for
all), then the marked processes not killed yet are searched a few times, all markers
in one pass over /proc (one may start another while they die). Last, the cgroups are
waited for and removed.
"""

SUPERVISOR_PROGRAM = r"""
import importlib.util, os, signal, sys
sys.path.append(sys.argv[1])
if importlib.util.find_spec("psutil") is None:
    sys.exit("psutil cannot be imported from " + sys.argv[1] + " by " + sys.executable)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
sys.stdout.write("armed\n")
sys.stdout.close()
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # the host stops reading stderr now
import json, socket, time
psutil = None
watched = {}
received = []  # descriptors received, in order, not yet taken by their watch line
held = {}

def let_go(key):
    for fd in held.pop(key, ()):
        os.close(fd)

def watch(key, pid, started, since, cgroup, marker, pipes):
    global psutil
    held[key] = received[:pipes]
    del received[:pipes]
    root = None
    if not cgroup:
        if psutil is None:
            import psutil
        try:
            root = psutil.Process(pid)
            if abs(root.create_time() - started) >= 0.01:
                root = None
        except psutil.Error:
            root = None
    watched[key] = (root, since, cgroup, tuple(marker) if marker else None)

channel = socket.socket(fileno=0)
pending = b""
while True:
    chunk, fds, _, _ = socket.recv_fds(channel, 1 << 16, 64)
    received += fds
    if not chunk:
        break
    *lines, pending = (pending + chunk).split(b"\n")
    for line in lines:
        try:
            message = json.loads(line)
            if message[0] == "watch":
                watch(*message[1:])
            elif message[0] == "close":
                let_go(message[1])
            elif message[0] == "release":
                watched.pop(message[1], None)
                let_go(message[1])
        except Exception:
            continue
if not watched:
    sys.exit(0)

entries = list(watched.values())
cgroups = [cgroup for _, _, cgroup, _ in entries if cgroup]
for cgroup in cgroups:
    try:
        with open(os.path.join(cgroup, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        pass

killed = set()

def kill(procs):
    for proc in procs:
        killed.add(proc.pid)
        try:
            proc.kill()
        except psutil.Error:
            pass

def with_descendants(roots):
    children = {}
    for proc in psutil.process_iter(["ppid"]):
        children.setdefault(proc.info["ppid"], []).append(proc)
    found = list(roots)
    for proc in found:
        found += children.pop(proc.pid, ())
    return found

roots = [root for root, _, cgroup, _ in entries if root is not None and not cgroup]
for root in roots:
    try:
        root.suspend()
    except psutil.Error:
        pass
if roots:
    kill(with_descendants(roots))
markers = {marker for _, _, cgroup, marker in entries if marker and not cgroup}
if markers:
    since = min(since for _, since, cgroup, marker in entries if marker and not cgroup)
    keys = {key for key, _ in markers}
    for _ in range(3):
        found = []
        for proc in psutil.process_iter(["create_time"]):
            if proc.pid == os.getpid() or proc.pid in killed:
                continue
            if (proc.info["create_time"] or 0) < since:
                continue
            try:
                environ = proc.environ()
                if any((key, environ.get(key)) in markers for key in keys):
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        found.append(proc)
            except psutil.Error:
                pass
        if not found:
            break
        kill(found)

deadline = time.monotonic() + 5
for cgroup in cgroups:
    try:
        while time.monotonic() < deadline:
            with open(os.path.join(cgroup, "cgroup.events")) as f:
                if "populated 0" in f.read():
                    break
            time.sleep(0.01)
        os.rmdir(cgroup)
    except OSError:
        pass
"""
