# hostile template 41_memory_bomb_list: must be refused or contained
from verifleet.schemas import BaseAnswer
HOARD = [0] * (10 ** 10)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
