"""Small building blocks shared by the API and the workers."""
