# hostile template 53_io_open: must be refused or contained
from io import open as io_open
from verifleet.schemas import BaseAnswer
io_open("__MARKER__", "w").write("x")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
