/** What `cadre send` and `cadre watch` print of a retried model turn. */
import { EventPrinter } from '../../src/client/event-printer';
import type { OwnEvent, StreamEventAt } from '../../src/streaming/events';

function printed(events: OwnEvent[]): string {
  let out = '';
  const printer = new EventPrinter({ write: (text) => (out += text) });
  events.forEach((event, offset) => printer.print({ ...event, at: 0, offset } as StreamEventAt));
  printer.endLine();
  return out;
}

describe('a retried model turn', () => {
  test('whose failed attempt had shown text: the reader is told that text is superseded', () => {
    expect(
      printed([
        { type: 'message_start', step: 'session', turn: 1, attempt: 1 },
        { type: 'text_delta', step: 'session', turn: 1, attempt: 1, text: 'half an ans' },
        { type: 'message_start', step: 'session', turn: 1, attempt: 2 },
        { type: 'text_delta', step: 'session', turn: 1, attempt: 2, text: 'the whole answer' },
      ]),
    ).toBe('half an ans\n(turn 1 again, attempt 2: the text above is superseded)\nthe whole answer\n');
  });

  test('whose failed attempt showed nothing: nothing to take back, and nothing said', () => {
    expect(
      printed([
        { type: 'message_start', step: 'session', turn: 1, attempt: 1 },
        { type: 'message_start', step: 'session', turn: 1, attempt: 2 },
        { type: 'text_delta', step: 'session', turn: 1, attempt: 2, text: 'first reply' },
      ]),
    ).toBe('first reply\n');
  });

  test("another turn's text is not this turn's", () => {
    expect(
      printed([
        { type: 'text_delta', step: 'session', turn: 1, attempt: 1, text: 'one' },
        { type: 'message_start', step: 'session', turn: 2, attempt: 2 },
        { type: 'text_delta', step: 'session', turn: 2, attempt: 2, text: 'two' },
      ]),
    ).toBe('onetwo\n');
  });
});
