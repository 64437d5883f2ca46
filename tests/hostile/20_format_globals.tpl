# hostile template 20_format_globals: must be refused or contained
from verifleet.schemas import BaseAnswer

def probe():
    return 1


LEAK = "{0.__globals__}".format(probe)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": LEAK}

    def verify(self) -> bool:
        return False
