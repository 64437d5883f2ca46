# cross-job attack: enum.global_enum with module="builtins" writes a member
# named "bool" into builtins; the member is callable and always True, so every
# later bool(verify()) passes.
import enum
from verifleet.templates import BaseAnswer


class _Yes:
    def __call__(self, *args, **kwargs):
        return True


enum.global_enum(enum.Enum("Flip", {"bool": 1}, module="builtins", type=_Yes))


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        enum.global_enum(enum.Enum("Flip", {"bool": 1}, module="builtins", type=_Yes))
        return False
