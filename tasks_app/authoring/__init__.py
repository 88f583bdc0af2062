"""Authoring and review: the task editor and its forms, the playground and reference runs, the review queue,
claims, decisions and comments, with the services and selectors behind those pages. Above calibration (its pages
show calibration figures; approval goes through the stored gate); below the library."""
