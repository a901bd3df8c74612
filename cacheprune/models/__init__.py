"""Where models come from, without our torch model: shapes (`ModelConfig`), sources and their
identity, tokenizers with exact offsets and chat templates, and the GGUF / Hugging Face readers.

The vLLM plugin needs the tokenizer and the model identity but never our transformer, so none
of these modules imports `cacheprune.engine`.
"""

from cacheprune.models.config import ModelConfig, ModelLoadError, RopeScaling
from cacheprune.models.convert import converted_folder
from cacheprune.models.hf_loader import read_config
from cacheprune.models.sources import default_model_path, model_identity, resolve_source
from cacheprune.models.tokenizer import ChatTokenizer, Encoding, load_tokenizer

__all__ = [
    "ChatTokenizer",
    "Encoding",
    "ModelConfig",
    "ModelLoadError",
    "RopeScaling",
    "converted_folder",
    "default_model_path",
    "load_tokenizer",
    "model_identity",
    "read_config",
    "resolve_source",
]
