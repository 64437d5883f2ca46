# hostile template 19_enum_global_enum: must be refused or contained
import enum
from verifleet.schemas import BaseAnswer

@enum.global_enum
class Shadow(enum.IntEnum):
    open = 1
    __module__ = "builtins"

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
