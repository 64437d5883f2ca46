# hostile template 57_dir_builtins: must be refused or contained
from verifleet.schemas import BaseAnswer
LEAK = dir()

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": str(LEAK)}

    def verify(self) -> bool:
        return False
