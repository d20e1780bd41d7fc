"""Stage 3: cost models — fitting, verification, the models artefact."""
