"""The built-in streamlet kinds, written on the public API (pipelines.api) like a user's.

Each module here declares its classes' `kind`; pipelines.kinds finds them by scanning this package, so no
list of kinds is kept anywhere else.
"""
