/**
 * One run at a time per key in this isolate: a caller that asks while a run for its key is under
 * way shares that run's promise instead of starting its own (a burst of pushes wanting one provider
 * token makes one). workerd resumes each awaiting request in its own context, and the request that
 * started the run awaits it too, so the run is not cancelled under the others.
 */
export function singleFlight<V>() {
  const running = new Map<string, Promise<V>>();
  return (key: string, run: () => Promise<V>): Promise<V> => {
    const current = running.get(key);
    if (current) return current;
    const started = run().finally(() => running.delete(key));
    running.set(key, started);
    return started;
  };
}
