"""One module per group of Camunda endpoints, each an ``APIRouter`` the app mounts under
``/engine-rest``."""
