# hostile template 09_pydantic_main: must be refused or contained
from pydantic import main
from verifleet.schemas import BaseAnswer
main.sys.modules["os"].system("touch __MARKER__")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
