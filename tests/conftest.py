from tests.fake_model_fixtures import fake_models, model_client  # noqa: F401
