"""Downstream model: follow a stream's selection and train an online classifier on it.

It subscribes to the selected-features topic and to the instances topic. Instances of
``--instance-stream`` are used prequentially (predict, then learn) by a linear SGD classifier
restricted to the current selection of ``--selection-stream``; each new version with a different
feature set starts a new model on those features.

    python -m streamfs.examples.downstream --selection-stream s1 --instance-stream s2
"""

from __future__ import annotations

import uuid

import click
import numpy as np
import scipy.sparse as sp

from streamfs.codec import CodecError, decode
from streamfs.settings import Settings
from streamfs.topics import load_catalogue


class RestrictedModel:
    """An SGD classifier over a fixed list of feature indices, with prequential accuracy."""

    def __init__(self, features: list[int], classes: np.ndarray) -> None:
        from sklearn.linear_model import SGDClassifier

        self.features = features
        self.classes = classes
        self.model = SGDClassifier(loss="log_loss", random_state=0)
        self.seen = self.correct = 0

    def learn_block(self, X, y) -> None:
        Xs = X[:, self.features]
        Xs = Xs.toarray() if sp.issparse(Xs) else np.asarray(Xs, dtype=float)
        if self.seen:
            self.correct += int((self.model.predict(Xs) == y).sum())
        self.model.partial_fit(Xs, y, classes=self.classes)
        self.seen += len(y)

    @property
    def accuracy(self) -> float:
        return self.correct / self.seen if self.seen else float("nan")


@click.command()
@click.option("--selection-stream", required=True, help="Stream whose selection to follow.")
@click.option("--instance-stream", required=True, help="Instance stream to train on.")
@click.option("--classes", default="0,1", show_default=True, help="Comma-separated labels.")
@click.option("--max-blocks", type=int, default=None, help="Stop after this many blocks.")
def main(selection_stream: str, instance_stream: str, classes: str, max_blocks: int | None) -> None:
    from confluent_kafka import Consumer

    settings = Settings.from_env()
    topics = load_catalogue(settings.topic_prefix)
    consumer = Consumer({**settings.kafka_config(), "group.id": f"downstream-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topics["selected"].name, topics["instances"].name])
    labels = np.array([int(c) if c.lstrip("-").isdigit() else c for c in classes.split(",")])
    model: RestrictedModel | None = None
    blocks = 0
    try:
        while max_blocks is None or blocks < max_blocks:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() or msg.value() is None:
                continue
            try:
                body = decode(msg.value())
            except CodecError:
                continue
            if body["kind"] == "result" and body["stream"] == selection_stream:
                features = [s["feature"] for s in body["selection"]]
                if features and (model is None or features != model.features):
                    if model is not None:
                        click.echo(f"selection v{body['version']}: retraining on {features} "
                                   f"(previous model: {model.seen} instances, "
                                   f"accuracy {model.accuracy:.3f})")
                    model = RestrictedModel(features, labels)
            elif body["kind"] == "instances" and body["stream"] == instance_stream and model:
                model.learn_block(body["X"], np.asarray(body["y"]))
                blocks += 1
                click.echo(f"{model.seen} instances on {len(model.features)} features, "
                           f"prequential accuracy {model.accuracy:.3f}")
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
