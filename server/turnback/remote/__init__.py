"""Talking to the live owner of a store over its private Unix socket.

Standard library only: an agent hook or a command-line command imports this before it knows whether
it needs anything heavier, and a live owner answers without the store ever being opened here.
"""
