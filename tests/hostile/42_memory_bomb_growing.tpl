# hostile template 42_memory_bomb_growing: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        hoard = []
        while True:
            hoard.append("x" * 10 ** 7)
