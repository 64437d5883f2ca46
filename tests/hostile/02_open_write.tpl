# hostile template 02_open_write: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        open("__MARKER__", "w").write("pwned")
        return False
