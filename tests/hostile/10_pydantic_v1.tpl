# hostile template 10_pydantic_v1: must be refused or contained
from pydantic import v1
from verifleet.schemas import BaseAnswer
v1.typing.sys.modules["os"].system("touch __MARKER__")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
