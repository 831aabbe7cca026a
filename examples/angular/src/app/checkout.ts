import { Component, signal } from '@angular/core';

@Component({
  selector: 'app-checkout',
  template: `
    <h1>Checkout</h1>
    <button id="pay" type="button" svc-trigger="checkout_terms" (click)="pay()">Pay</button>
    <p id="paid">Paid: {{ paid() }}</p>
  `,
})
export class Checkout {
  readonly paid = signal(0);

  pay() {
    this.paid.update((n) => n + 1);
  }
}
