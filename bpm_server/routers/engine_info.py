"""``/engine`` and ``/version``: which engines this server has (one, ``default``) and bpm's
version (bpm's own, not a Camunda version). Both need a credential that may read."""

from __future__ import annotations

from fastapi import APIRouter

from bpm.api import __version__
from bpm_server.history_models import EngineDto, VersionDto
from bpm_server.routing import Reader

router = APIRouter(tags=["Engine"])


@router.get("/engine", response_model=list[EngineDto])
def engines(caller: Reader) -> list[EngineDto]:
    return [EngineDto(name="default")]


@router.get("/version", response_model=VersionDto)
def version(caller: Reader) -> VersionDto:
    return VersionDto(version=__version__)
