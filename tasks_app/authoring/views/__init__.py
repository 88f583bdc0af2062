"""Pages of authoring and review: the editor (authoring.py), the playground (playground.py), review (review.py)."""
