"""The playground at `/`: a page that tries the API from the browser (`static/`), and the
routes that serve it (`routes`)."""
