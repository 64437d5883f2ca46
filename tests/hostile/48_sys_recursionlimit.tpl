# hostile template 48_sys_recursionlimit: must be refused or contained
import sys
from verifleet.schemas import BaseAnswer
sys.setrecursionlimit(10 ** 9)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
