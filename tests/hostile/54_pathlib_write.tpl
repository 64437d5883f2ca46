# hostile template 54_pathlib_write: must be refused or contained
from pathlib import Path
from verifleet.schemas import BaseAnswer
Path("__MARKER__").write_text("x")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
