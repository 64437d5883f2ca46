# hostile template 22_format_map_class_walk: must be refused or contained
from verifleet.schemas import BaseAnswer
LEAK = "{x.__class__.__mro__[1].__subclasses__}".format_map({"x": ""})

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": LEAK}

    def verify(self) -> bool:
        return False
