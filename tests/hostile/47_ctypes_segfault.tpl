# hostile template 47_ctypes_segfault: must be refused or contained
import ctypes
from verifleet.schemas import BaseAnswer
ctypes.string_at(0)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
