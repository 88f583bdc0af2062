FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN apt-get update && apt-get install -y --no-install-recommends postgresql-client && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY corecraft_site corecraft_site
COPY world_app world_app
COPY tasks_app tasks_app
COPY rubrics_app rubrics_app
COPY trainer_bridge trainer_bridge
RUN pip install --no-cache-dir .
COPY . .
RUN DEBUG=0 SECRET_KEY=build python manage.py collectstatic --noinput -v 0
EXPOSE 8000
CMD ["gunicorn", "corecraft_site.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2"]
