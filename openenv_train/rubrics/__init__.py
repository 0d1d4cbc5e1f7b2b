"""Composable reward rubrics that score trace rows (see DESIGN.md)."""
