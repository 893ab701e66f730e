//! A cluster scan's pieces, as the Python package calls them in-process.
