# hostile template 26_generator_frame: must be refused or contained
from verifleet.schemas import BaseAnswer
LEAK = (x for x in ()).gi_frame.f_globals

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": str(LEAK)}

    def verify(self) -> bool:
        return False
