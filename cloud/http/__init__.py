"""The cloud's HTTP side: the API (`api.py`), its tokens (`auth.py`), its OpenAPI document (`openapi.py`) and the
operator's live page (`web/`)."""
