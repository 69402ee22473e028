//! Recipes.
