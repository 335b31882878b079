"""Celery tasks of the chat app: thin, take ids, safe to run twice."""

from __future__ import annotations

from celery import shared_task

from chat.services import answer_verify


@shared_task(name="chat.answer_verify", autoretry_for=(OSError,), max_retries=3, retry_backoff=True,
             soft_time_limit=120, time_limit=150)
def answer_verify_task(message_id: int) -> None:
    answer_verify(message_id=message_id)
