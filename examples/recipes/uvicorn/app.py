"""A tiny ASGI app for the uvicorn and hypercorn recipes: /health for readiness, /hello for the check."""
import os

SERVER = os.environ.get('SERVER', 'asgi')


async def app(scope, receive, send):
    if scope['type'] == 'lifespan':
        while True:
            message = await receive()
            if message['type'] == 'lifespan.startup':
                await send({'type': 'lifespan.startup.complete'})
            elif message['type'] == 'lifespan.shutdown':
                await send({'type': 'lifespan.shutdown.complete'})
                return
    if scope['type'] != 'http':
        return
    path = scope['path']
    if path == '/health':
        status, body = 200, 'ok\n'
    elif path == '/hello':
        status, body = 200, f'hello from {SERVER} pid {os.getpid()}\n'
    else:
        status, body = 404, 'not found\n'
    data = body.encode()
    await send({'type': 'http.response.start', 'status': status,
                'headers': [(b'content-type', b'text/plain'), (b'content-length', str(len(data)).encode())]})
    await send({'type': 'http.response.body', 'body': data})
