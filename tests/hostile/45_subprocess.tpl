# hostile template 45_subprocess: must be refused or contained
import subprocess
from verifleet.schemas import BaseAnswer
subprocess.run(["sh", "-c", "touch __MARKER__"])

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
