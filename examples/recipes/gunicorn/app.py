"""A tiny WSGI app for the gunicorn recipe: /health for berth's readiness probe, /hello for the check."""
import os


def app(environ, start_response):
    path = environ.get('PATH_INFO', '/')
    if path == '/health':
        status, body = '200 OK', 'ok\n'
    elif path == '/hello':
        status, body = '200 OK', f'hello from gunicorn worker {os.getpid()}\n'
    else:
        status, body = '404 Not Found', 'not found\n'
    data = body.encode()
    start_response(status, [('Content-Type', 'text/plain'), ('Content-Length', str(len(data)))])
    return [data]
