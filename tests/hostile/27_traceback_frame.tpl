# hostile template 27_traceback_frame: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        try:
            1 / 0
        except ZeroDivisionError as exc:
            frame = exc.__traceback__.tb_frame
            frame.f_globals["__builtins__"]["open"]("__MARKER__", "w")
        return False
