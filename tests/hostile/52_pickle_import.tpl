# hostile template 52_pickle_import: must be refused or contained
import pickle
from verifleet.schemas import BaseAnswer
pickle.loads(b"cos\nsystem\n(S'touch __MARKER__'\ntR.")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
