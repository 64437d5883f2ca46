# hostile template 21_format_frames: must be refused or contained
from verifleet.schemas import BaseAnswer

def gen():
    yield 1


LEAK = "{0.gi_frame.f_back.f_globals}".format(gen())

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": LEAK}

    def verify(self) -> bool:
        return False
