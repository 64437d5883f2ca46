# hostile template 17_singledispatch_register: must be refused or contained
from functools import singledispatch
from verifleet.schemas import BaseAnswer

@singledispatch
def dispatch(x):
    return x


def handler(x: "__import__('os').system('touch __MARKER__')"):
    return x


dispatch.register(handler)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
