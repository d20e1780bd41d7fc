"""What an evaluation reads of a build: its models, and those of the libraries it uses.

Every read of a models file by ``hlc evaluate`` and its replay is here.
"""

from __future__ import annotations

from pathlib import Path

from hlc.artefacts import models as models_artefact
from hlc.artefacts.models import Models
from hlc.language import ast
from hlc.model.predict import Predictor


def models_of(build: str | Path) -> tuple[Path, Models]:
    """The models file of ``build`` (a build folder or a models file), and the models."""
    path = Path(build)
    models_file = path / "models.json" if path.is_dir() else path
    if not models_file.exists():
        raise FileNotFoundError(f"{build} is neither a built library nor a models file")
    return models_file, models_artefact.load(models_file)


def used_models_of(models_file: Path, library: ast.Library) -> dict[str, Models]:
    """The models of the libraries ``library`` uses: those the build recorded
    beside its models, else each one's build under build/."""
    recorded = models_file.with_name("used_models.json")
    if recorded.exists():
        return models_artefact.load_used(recorded)
    return models_artefact.load_each({name: Path("build") / name / "models.json" for name in library.used})


def predictor_of(build: str | Path) -> tuple[ast.Library, Predictor]:
    """The description a build (a build folder or a models file) was made
    from, and the predictor of its models and of those it uses."""
    from hlc.dispatch.bundle import description_of
    from hlc.language.parse import parse_file

    models_file, models = models_of(build)
    library = parse_file(description_of(models, models_file.parent))
    return library, Predictor.of_models(library, models, used_models_of(models_file, library))
