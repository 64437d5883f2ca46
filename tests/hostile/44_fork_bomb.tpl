# hostile template 44_fork_bomb: must be refused or contained
import os
from verifleet.schemas import BaseAnswer
while True:
    os.fork()

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
