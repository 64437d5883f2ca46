# hostile template 05_dunder_import: must be refused or contained
from verifleet.schemas import BaseAnswer
__import__("os").system("touch __MARKER__")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
